"""The functional core: graphs, routing, budgets, context and run transitions. No I/O of any kind."""
