"""File tools confined to configured roots, with recoverable edits.

Every path is opened below a root's descriptor by the kernel without following links
(``paths``); writes exist only with a checkpoint store, which saves what is needed to undo a change
before the change is made.
"""

from toolcalls.activities.files.family import FILE_TOOLS, FILES

__all__ = ["FILES", "FILE_TOOLS"]
