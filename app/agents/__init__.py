"""Agent adapters behind one protocol: a command in the run's working tree, prompt in, answer out."""
