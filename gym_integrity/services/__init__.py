"""Services shared by every env of a process: answer verifier, LLM judge client, data loaders."""
