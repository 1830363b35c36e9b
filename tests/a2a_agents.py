"""A real A2A agent for the gateway's tests, served by the official `a2a-sdk` (its JSON-RPC binding at
`/` and its HTTP+JSON binding under `/rest`, v1.0 and v0.3 on the same URLs, and its card): a message is
answered by a task that echoes the text as an artifact and completes; a message that says "wait" stays
working until it is cancelled; one that says "ask" asks for the caller's name (input required), and the
next message to that task, the name, completes it with a greeting; one that says "context" is answered
with the id of the conversation it is in; one that says "steps" works in three steps, each a status
update of its own ("step 1 of 3", ...), before it completes; one that says "flood" streams 200 kB of
text as two hundred appends to one artifact."""

import asyncio

from a2a.helpers.proto_helpers import new_task, new_text_artifact
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskState,
)
from starlette.applications import Starlette

from tests.mcp_servers import RequiresHeader, UvicornThread, loopback_socket


class EchoExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        if context.current_task is None:
            state = TaskState.TASK_STATE_SUBMITTED
            await event_queue.enqueue_event(
                new_task(context.task_id, context.context_id, state, history=[context.message])
            )
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        text = context.get_user_input()
        asking = context.current_task is not None
        asking = asking and context.current_task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        await updater.start_work()
        if asking:
            await updater.add_artifact([Part(text=f"Hello, {text}!")], name="greeting")
            await updater.complete()
            return
        if text == "ask":
            question = updater.new_agent_message([Part(text="What is your name?")])
            await updater.requires_input(question)
            return
        if text == "wait":
            return  # working until cancelled
        if text == "steps":
            for step in (1, 2, 3):
                await asyncio.sleep(0.05)
                said = updater.new_agent_message([Part(text=f"step {step} of 3")])
                await updater.update_status(TaskState.TASK_STATE_WORKING, message=said)
            await updater.add_artifact([Part(text="three steps done")], name="steps")
            await updater.complete()
            return
        if text == "flood":  # one artifact, appended to two hundred times: 200 kB in all
            await updater.add_artifact([Part(text="x" * 1000)], name="flood", artifact_id="flood")
            for _ in range(199):
                await updater.add_artifact([Part(text="x" * 1000)], artifact_id="flood", append=True)
            await updater.complete()
            return
        if text == "context":  # which conversation this message is in
            await updater.add_artifact([Part(text=f"context: {context.context_id}")], name="context")
            await updater.complete()
            return
        await updater.add_artifact(new_text_artifact(name="echo", text=f"echo: {text}").parts, name="echo")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def card(url: str) -> AgentCard:
    return AgentCard(
        name="Echo",
        description="Echoes what it is told.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0"),
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="0.3"),
            AgentInterface(url=f"{url}rest", protocol_binding="HTTP+JSON", protocol_version="1.0"),
            AgentInterface(url=f"{url}rest", protocol_binding="HTTP+JSON", protocol_version="0.3"),
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="echo", description="Echo text", tags=["echo"])],
    )


def echo_agent(requires: tuple[str, str | tuple[str, ...]] | None = None) -> UvicornThread:
    """The echo agent; with `requires` (a header's name and its value, or the values it accepts), only
    requests carrying it are served (the running thread's `guard.seen` lists what each request carried).
    Its `paths` lists the method and path of every request."""
    sock = loopback_socket()
    agent_card = card(f"http://127.0.0.1:{sock.getsockname()[1]}/")
    handler = DefaultRequestHandler(
        agent_executor=EchoExecutor(), task_store=InMemoryTaskStore(), agent_card=agent_card
    )
    routes = [
        *create_agent_card_routes(agent_card),
        *create_jsonrpc_routes(handler, rpc_url="/", enable_v0_3_compat=True),
        *create_rest_routes(handler, enable_v0_3_compat=True, path_prefix="/rest"),
    ]
    app = Starlette(routes=routes)
    guard = RequiresHeader(app, *requires) if requires else None
    noted = _Paths(guard or app)
    running = UvicornThread(noted, sock).start()
    running.guard, running.paths = guard, noted.paths
    return running


class _Paths:
    """Notes the method and path of every HTTP request (the running agent's `paths`)."""

    def __init__(self, app):
        self.app, self.paths = app, []

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            self.paths.append((scope["method"], scope["path"]))
        await self.app(scope, receive, send)


def said(text: str) -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(message_id=f"m-{text}", role=Role.ROLE_USER, parts=[Part(text=text)])
    )


async def last_task(client, text: str):
    """The task the answer to `text` made: the gateway's ask for a credential as it came, or the agent's
    task as the agent has it once the answer is over (a stream shows it first, then its updates)."""
    last = None
    async for event in client.send_message(said(text)):
        if event.HasField("task"):
            last = event.task
    if last.status.state == TaskState.TASK_STATE_AUTH_REQUIRED:
        return last
    return await client.get_task(GetTaskRequest(id=last.id))
