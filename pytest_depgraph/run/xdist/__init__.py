"""The walk on pytest-xdist: its hooks, the controller's plan and scheduler, the workers, and
what travels between them."""
