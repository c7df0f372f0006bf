"""One mission in an Actions job: read the order, run the agent, commit and push, store the mission record."""
