"""Approvals in the chats where people already work: one sub-package per chat.

A chat channel has two halves. Its poster runs in the ``toolcalls.notify`` activity: when a call
starts waiting (and at each reminder and escalation) the workflow notifies the channel by name as
it notifies a webhook, and the poster posts the pending request with buttons. Its interactions
endpoint is served by the inbox's process: it authenticates the chat's request, maps the chat user
to an approver name, and decides through ``ToolCallClient``, the same validated update every
front uses. ``slack`` is the first channel.
"""
