"""Graph analysis: the model, validation, reachability, contracts, cost bounds, simulation and pictures. No I/O."""
