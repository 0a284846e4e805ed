"""One door per host: the only modules that touch another package's private API."""
