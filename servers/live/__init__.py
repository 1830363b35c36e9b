"""Live health updates: the entries the health websockets send, how a change is published, and the
websocket statistics shared by every web process (all kept in Redis)."""
