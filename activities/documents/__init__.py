"""Text and tables from documents under configured roots: read_document, search_document."""

from toolcalls.activities.documents.family import DOCUMENT_TOOLS, DOCUMENTS

__all__ = ["DOCUMENTS", "DOCUMENT_TOOLS"]
