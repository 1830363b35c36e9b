"""The virtual-server adapter of the gateway: a virtual server at `/<path>/mcp` is served by the gateway
itself, after the same front, caller, session and decision as a plain server (gateway/app.py):

- `answers.py`: the virtual server's answers (initialize, lists, routed calls, GET and DELETE);
- `sessions.py`: a caller's virtual session and its members' sessions, in Redis;
- `members.py`: speaking to a member for a caller: its session, one request, whole lists;
- `judged.py`: the one decision at the member (its quarantine, its rule, both targets' limits);
- `lists.py`: the members' lists gathered, mapped by the definition and cut to the caller;
- `asks.py`: members' requests to the client and the answers back, renamed;
- `streams.py`: the members' own streams merged into the client's GET stream;
- `sse.py`: the SSE transport (2024-11-05) for a virtual server."""
