"""The processes the registry runs as: the embedded PostgreSQL and Redis, the web server, the supervisor
of `manage.py serve`, the roles of the container image and the start-up checks."""
