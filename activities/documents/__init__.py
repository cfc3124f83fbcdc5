"""Text and tables from documents under configured roots: read_document, search_document."""
