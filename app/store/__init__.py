"""The run journal behind one interface, with the same file layout on GitHub and on disk."""
