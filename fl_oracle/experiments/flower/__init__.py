"""fedsel on Flower: a selection strategy and the Digits-4 apps (needs ``fedsel[flower]``).

* :mod:`.strategy` — :class:`FedselStrategy`, Flower FedProx whose ``configure_train`` picks K
  nodes with any fedsel selector (usable in any Flower app).
* :mod:`.server_side` — :class:`ServerSide`: what the server holds beside the nodes (validation
  data to evaluate candidates and the global model, the partition's sizes and steps).
* :mod:`.digits` — the oracle's per-client and server-side computations, one node at a time.
* :mod:`.client_app`, :mod:`.server_app` — the Digits-4 ClientApp and ServerApp (``flwr run``).
* :mod:`.local_grid` — a Grid that runs ClientApps in this process (tests, ``--engine local``).
* :mod:`.run` — :func:`run_flower`: Flower's simulation engine (Ray) or the local grid.
* :mod:`.mod` — ``fedsel_stats_mod``: one line in a stock ClientApp's mods adds the statistics.
* :mod:`.guard` — bounds on what nodes claim (sizes, update norms, statistics that contradict
  the update, another model's fingerprint), named per round (:class:`.guard.ReplyGuard`).
* :mod:`.probe` — the strategy's message exchange: which node is which client, the replies
  collected, the probe phase's rows and its cost.
* :mod:`.stock` — what the strategy infers for stock clients that report no domain or
  statistics.
* :mod:`.codec` — what a train message carries and what it cost: models as flat vectors and
  back, the replies parsed.
* :mod:`.certs` — TLS certificates and SuperNode keys for an authenticated deployment.
"""
