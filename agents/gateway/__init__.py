"""A2A agents through the registry's gateway (`/<agent path>/a2a`): the caller, the agent and each
message judged by the same Principal and scope rules as MCP (gateway/), tasks kept to the caller that
created them, the agent's card served with the gateway's URL. `app.py` serves, `tasks.py` keeps tasks'
owners, `cards.py` writes the card, `pushes.py` checks push-notification URLs."""
