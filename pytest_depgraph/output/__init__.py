"""What a run leaves behind: the terminal summary, the DOT file, the HTML run report.
"""
