"""Flower's quickstart-pytorch shape, unmodified, with FedselStrategy: without the mod (a stock
client) and with it (one line in mods=[...])."""

import logging

import numpy as np
import pytest
import torch
from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from torch import nn

from fl_oracle.experiments.flower.local_grid import LocalGrid
from fl_oracle.experiments.flower.mod import client_statistics, fedsel_stats_mod
from fl_oracle.experiments.flower.server_side import NodePolicy, ServerSide
from fl_oracle.experiments.flower.strategy import FedselStrategy, FlowerRunError, flatten

DOMAINS = ("bright", "dark")
N_NODES = 6


class Net(nn.Module):  # the stock example's shape: a plain nn.Module
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.fc = nn.Linear(4 * 4 * 4, 3)

    def forward(self, x):
        x = torch.relu(nn.functional.max_pool2d(self.conv(x), 2))
        return self.fc(x.flatten(1))


def load_data(pid: int, n: int = 48, seed: int = 0):
    """A partition's (x, y): 3 classes of 8x8 bars; 'dark' domain inverts and shifts them."""
    g = torch.Generator().manual_seed(1000 * seed + pid)
    y = torch.randint(0, 3, (n,), generator=g)
    x = 0.3 * torch.randn(n, 1, 8, 8, generator=g)
    for i, c in enumerate(y.tolist()):
        x[i, 0, 2 * c + 1 : 2 * c + 3, :] += 1.5
    if DOMAINS[pid % 2] == "dark":
        x = -x + 0.5
    return x, y


def make_app(mods=()):
    app = ClientApp(mods=list(mods))

    @app.train()
    def train(msg: Message, context: Context):  # as in quickstart-pytorch
        model = Net()
        model.load_state_dict(msg.content["arrays"].to_torch_state_dict())
        x, y = load_data(int(context.node_config["partition-id"]))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for i in range(0, len(y), 16):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x[i : i + 16]), y[i : i + 16])
            loss.backward()
            opt.step()
        content = RecordDict(
            {
                "arrays": ArrayRecord(model.state_dict()),
                "metrics": MetricRecord({"train_loss": loss.item(), "num-examples": len(y)}),
            }
        )
        return Message(content=content, reply_to=msg)

    @app.evaluate()
    def evaluate(msg: Message, context: Context):
        model = Net()
        model.load_state_dict(msg.content["arrays"].to_torch_state_dict())
        x, y = load_data(int(context.node_config["partition-id"]), seed=1)
        with torch.no_grad():
            out = model(x)
        m = {"eval_loss": float(nn.functional.cross_entropy(out, y)),
             "eval_acc": float((out.argmax(1) == y).float().mean()), "num-examples": len(y)}  # fmt: skip
        return Message(content=RecordDict({"metrics": MetricRecord(m)}), reply_to=msg)

    return app


def _val():
    return {d: load_data(100 + j, n=64, seed=2) for j, d in enumerate(DOMAINS)}


def evaluate_candidates(w_t, deltas):
    """Server side: accuracy (%) of w_t + Δ_i on each domain's validation data."""
    like = ArrayRecord(Net().state_dict())
    names = list(Net().state_dict())
    out = {f"U_{d}": [] for d in DOMAINS}
    out["U"] = []
    for delta in deltas:
        flat, i, sd = w_t + delta, 0, {}
        for name, a in zip(names, like.values(), strict=True):
            n = int(np.prod(a.shape))
            sd[name] = torch.as_tensor(flat[i : i + n]).reshape(a.shape)
            i += n
        model = Net()
        model.load_state_dict(sd)
        accs = []
        for d, (x, y) in _val().items():
            with torch.no_grad():
                acc = 100.0 * float((model(x).argmax(1) == y).float().mean())
            out[f"U_{d}"].append(acc)
            accs.append(acc)
        out["U"].append(float(np.mean(accs)))
    return {k: np.asarray(v) for k, v in out.items()}


def _grid(app):
    grid = LocalGrid(app, N_NODES)
    for i, ctx in enumerate(grid.contexts.values()):  # a deployment's node config
        ctx.node_config["domain"] = DOMAINS[i % 2]
    return grid


def _run(strategy, app, rounds=2):
    torch.manual_seed(0)
    strategy.start(grid=_grid(app), initial_arrays=ArrayRecord(Net().state_dict()),
                   num_rounds=rounds)  # fmt: skip
    return strategy


def test_a_stock_client_joins_a_selector_that_reads_only_u():
    s = _run(FedselStrategy("maxmin:2", k=2, server=ServerSide(evaluate_candidates=evaluate_candidates),
                            nodes=NodePolicy(wait_for_nodes=0.1)), make_app())  # fmt: skip
    assert len(s.history) == 2
    table = s.tables[0]
    assert list(table["client_id"]) == [f"node-{1001 + i}" for i in range(N_NODES)]
    # no domain reported: inferred from the per-domain lift of each update
    assert list(table["domain"]) == [DOMAINS[i % 2] for i in range(N_NODES)]  # all right here
    # not measured, so stored as missing (the selector saw neutral values: maxmin reads neither)
    assert table["F"].isna().all() and table["B"].isna().all()
    # a node keeps its inferred domain from round to round
    dom0 = dict(zip(s.tables[0]["client_id"], s.tables[0]["domain"], strict=True))
    dom1 = dict(zip(s.tables[1]["client_id"], s.tables[1]["domain"], strict=True))
    assert dom0 == dom1
    assert all(row["fallback"] == "" for row in s.history)


def test_a_selector_that_reads_f_falls_back_or_stops_and_says_why(caplog):
    caplog.set_level(logging.WARNING)
    s = _run(FedselStrategy("fisher-topk", k=2, server=ServerSide(evaluate_candidates=evaluate_candidates),
                            nodes=NodePolicy(wait_for_nodes=0.1)), make_app())  # fmt: skip
    assert "selected by proportional" in s.history[0]["fallback"]
    said = [r.getMessage() for r in caplog.records if "reads F" in r.getMessage()]
    assert len(said) == 1 and "fedsel_stats_mod" in said[0] and "6 of 6 nodes" in said[0]
    with pytest.raises(FlowerRunError, match="fisher-topk reads F, which 6 of 6 nodes"):
        _run(FedselStrategy("fisher-topk", k=2, server=ServerSide(evaluate_candidates=evaluate_candidates),
                            nodes=NodePolicy(wait_for_nodes=0.1, on_missing="error")), make_app())  # fmt: skip


def test_with_the_mod_every_statistic_is_there():
    mod = fedsel_stats_mod(Net, lambda ctx: load_data(int(ctx.node_config["partition-id"])))
    s = _run(FedselStrategy("fisher-topk", k=2, server=ServerSide(evaluate_candidates=evaluate_candidates),
                            nodes=NodePolicy(wait_for_nodes=0.1, on_missing="error")), make_app([mod]))  # fmt: skip
    table = s.tables[0]
    assert list(table["client_id"]) == [str(i) for i in range(N_NODES)]  # partition ids
    assert list(table["domain"]) == [DOMAINS[i % 2] for i in range(N_NODES)]
    assert (table["F"] > 0).all() and table["F"].nunique() == N_NODES
    assert table["B"].notna().all() and (table["B"] >= 0).all()
    assert all(row["fallback"] == "" for row in s.history)
    # F is the per-sample gradient norm at the server's model, computed on the first 64 samples
    x, y = load_data(3)
    model = Net()
    model.load_state_dict(ArrayRecord(Net().state_dict()).to_torch_state_dict())
    st = client_statistics(model, (x, y), max_samples=10)
    sq = []
    for n in range(10):
        model.zero_grad()
        torch.log_softmax(model(x[n : n + 1]), -1)[0, y[n]].backward()
        sq.append(sum(float((p.grad**2).sum()) for p in model.parameters()))
    assert st["F"] == pytest.approx(np.mean(sq), rel=1e-4)
    assert st["label-hist"] == np.bincount(y.numpy(), minlength=3).tolist()
    assert flatten(ArrayRecord(Net().state_dict())).size == sum(
        p.numel() for p in Net().parameters()
    )


def test_stock_metrics_are_aggregated_as_fedavg_and_the_history_is_in_the_result():
    strategy = FedselStrategy("maxmin:2", k=2, server=ServerSide(evaluate_candidates=evaluate_candidates),
                              nodes=NodePolicy(wait_for_nodes=0.1))  # fmt: skip
    torch.manual_seed(0)
    result = strategy.start(grid=_grid(make_app()), initial_arrays=ArrayRecord(Net().state_dict()),
                            num_rounds=2)  # fmt: skip
    train = result.train_metrics_clientapp
    assert set(train) == {1, 2} and "train_loss" in train[1] and train[1]["n-aggregated"] == 2
    assert "F" not in train[1] and "partition-id" not in train[1]
    ev = result.evaluate_metrics_clientapp
    assert 0.0 <= ev[2]["eval_acc"] <= 1.0 and ev[2]["eval_loss"] > 0
    assert len(result.fedsel_history) == 2
    assert list(result.fedsel_history["selected"]) == [r["selected"] for r in strategy.history]
    assert set(result.fedsel_stats["round"]) == {0, 1}


def test_client_metrics_are_the_mean_weighted_by_num_examples():
    strategy = FedselStrategy("maxmin:2", k=2)
    replies = [
        RecordDict({"metrics": MetricRecord({"train_loss": 1.0, "num-examples": 10, "F": 5.0})}),
        RecordDict({"metrics": MetricRecord({"train_loss": 3.0, "num-examples": 30, "F": 9.0})}),
    ]
    out = strategy._client_metrics(replies, None)
    assert out["train_loss"] == pytest.approx(2.5) and "F" not in out
