"""The mod line the Flower tutorial shows, on an app shaped as Flower's quickstart-pytorch:
``load_data(partition_id, num_partitions, batch_size) -> (trainloader, testloader)`` over
DataLoaders of ``{"img", "label"}`` dicts, the train function reading the partition from the
node config, the batch size and epochs from the run config and ``lr`` from the message's
config. (Written for this test with the stock app's interface; the stock app downloads
CIFAR-10, which no test may.)"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from torch import nn
from torch.utils.data import DataLoader, Dataset

from fl_oracle.experiments.flower.codec import PHASE_KEY
from fl_oracle.experiments.flower.local_grid import LocalGrid
from fl_oracle.experiments.flower.mod import fedsel_stats_mod, quickstart_data
from fl_oracle.experiments.flower.server_side import NodePolicy, ServerSide
from fl_oracle.experiments.flower.strategy import FedselStrategy, FlowerRunError

N_NODES = 4


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.fc = nn.Linear(4 * 4 * 4, 10)

    def forward(self, x):
        return self.fc(torch.relu(nn.functional.max_pool2d(self.conv(x), 2)).flatten(1))


class Images(Dataset):
    """Dict samples, as Flower Datasets yield them: {"img": (3, 8, 8), "label": int}."""

    def __init__(self, seed: int, n: int):
        g = torch.Generator().manual_seed(seed)
        self.y = torch.randint(0, 10, (n,), generator=g)
        self.x = 0.2 * torch.randn(n, 3, 8, 8, generator=g) + self.y.view(-1, 1, 1, 1) / 10

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return {"img": self.x[i], "label": int(self.y[i])}


def load_data(partition_id: int, num_partitions: int, batch_size: int):
    """The quickstart's signature: (trainloader, testloader) of this partition."""
    assert 0 <= partition_id < num_partitions
    train = DataLoader(Images(partition_id, 40 + 8 * partition_id), batch_size=batch_size,
                       shuffle=True)  # fmt: skip
    return train, DataLoader(Images(100 + partition_id, 16), batch_size=batch_size)


def _train(msg: Message, context: Context) -> Message:
    model = Net()
    model.load_state_dict(msg.content["arrays"].to_torch_state_dict())
    trainloader, _ = load_data(context.node_config["partition-id"],
                               context.node_config["num-partitions"],
                               context.run_config["batch-size"])  # fmt: skip
    opt = torch.optim.SGD(model.parameters(), lr=msg.content["config"]["lr"], momentum=0.9)
    total = 0.0
    for _ in range(context.run_config["local-epochs"]):
        for batch in trainloader:
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(batch["img"]), batch["label"])
            loss.backward()
            opt.step()
            total += loss.item()
    metrics = {"train_loss": total / len(trainloader), "num-examples": len(trainloader.dataset)}
    content = RecordDict({"arrays": ArrayRecord(model.state_dict()),
                          "metrics": MetricRecord(metrics)})  # fmt: skip
    return Message(content=content, reply_to=msg)


def evaluate_candidates(w_t, deltas):
    """The server's validation data, one set per domain: U and U_<domain> of each w_t + Δ_i."""
    val = {d: Images(200 + j, 32) for j, d in enumerate(("a", "b"))}
    out = {"U": [], "U_a": [], "U_b": []}
    for delta in deltas:
        model = Net()
        torch.nn.utils.vector_to_parameters(torch.as_tensor(w_t + delta), model.parameters())
        accs = []
        for d, data in val.items():
            with torch.no_grad():
                acc = 100.0 * float((model(data.x).argmax(1) == data.y).float().mean())
            out[f"U_{d}"].append(acc)
            accs.append(acc)
        out["U"].append(sum(accs) / len(accs))
    return out


def test_the_tutorials_mod_line_works_on_a_quickstart_shaped_app():
    app = ClientApp(mods=[fedsel_stats_mod(Net, quickstart_data(load_data))])  # the line
    app.train()(_train)
    grid = LocalGrid(app, N_NODES, run_config={"batch-size": 16, "local-epochs": 1})
    for i, ctx in enumerate(grid.contexts.values()):  # --node-config "... domain=<name>"
        ctx.node_config["domain"] = ("a", "b")[i % 2]
    strategy = FedselStrategy("fisher-topk", k=2, fraction_evaluate=0.0,
                              server=ServerSide(evaluate_candidates=evaluate_candidates), nodes=NodePolicy(wait_for_nodes=0.1, on_missing="error", train_config={"lr": 0.05}))  # fmt: skip
    torch.manual_seed(0)
    strategy.start(grid=grid, initial_arrays=ArrayRecord(Net().state_dict()), num_rounds=2)
    assert len(strategy.history) == 2 and all(r["failed"] == "" for r in strategy.history)
    table = strategy.tables[1]
    assert list(table["client_id"]) == [str(i) for i in range(N_NODES)]
    assert (table["F"] > 0).all() and table["B"].notna().all()
    assert list(table["n_samples"]) == [40 + 8 * i for i in range(N_NODES)]


VAL = {d: Images(200 + j, 32) for j, d in enumerate(("a", "b"))}


def validation_gradients(w):
    """The server's per-domain validation gradients at w (flattened in the model's order),
    its accuracy and the sizes: what the probe pass sends and calibrates with."""
    model = Net()
    torch.nn.utils.vector_to_parameters(torch.as_tensor(w), model.parameters())
    grads, acc = [], {}
    for d, data in VAL.items():
        model.zero_grad()
        out = model(data.x)
        nn.functional.cross_entropy(out, data.y).backward()
        grads.append(torch.cat([p.grad.reshape(-1) for p in model.parameters()]).numpy())
        acc[d] = 100.0 * float((out.argmax(1) == data.y).float().mean())
    return np.stack(grads), acc, {d: len(data) for d, data in VAL.items()}


def _quickstart_grid():
    app = ClientApp(mods=[fedsel_stats_mod(Net, quickstart_data(load_data))])  # the line
    app.train()(_train)
    grid = LocalGrid(app, N_NODES, run_config={"batch-size": 16, "local-epochs": 1})
    for i, ctx in enumerate(grid.contexts.values()):
        ctx.node_config["domain"] = ("a", "b")[i % 2]
    return grid


@pytest.mark.parametrize("spec", ["maxmin:2@probe", "eps-lt:5@probe"])
def test_a_probe_spec_runs_on_the_quickstart_app_with_the_mod_line(spec):
    """The mod serves the probe pass itself (the stock train function would train on it):
    every node answers it every round, nobody falls back, and only the picks train."""
    strategy = FedselStrategy(spec, k=2, fraction_evaluate=0.0,
                              server=ServerSide(evaluate_candidates=evaluate_candidates,
                                                validation_gradients=validation_gradients), nodes=NodePolicy(wait_for_nodes=0.1, on_missing="error", train_config={"lr": 0.05}))  # fmt: skip
    torch.manual_seed(0)
    strategy.start(grid=_quickstart_grid(), initial_arrays=ArrayRecord(Net().state_dict()),
                   num_rounds=2)  # fmt: skip
    assert len(strategy.history) == 2
    for row, table in zip(strategy.history, strategy.tables, strict=True):
        assert row["failed"] == "" and row["fallback"] == ""
        assert len(row["selected"].split(";")) == 2
        assert list(table["client_id"]) == [str(i) for i in range(N_NODES)]
        assert table[["U", "U_a", "U_b", "F"]].notna().all().all()
        # every node's probe pass: min(64, its 40 + 8 i samples); what a stock train
        # function trains is not reported (NaN)
        assert row["cost_probe_samples"] == 40 + 48 + 56 + 64


def test_the_mods_probe_reply_is_the_first_order_utility_of_the_loss_gradient():
    """x_d = lr · steps · <grad L_i(w), g_d> and cos-g against sum_d g_d, checked against
    autograd on the node's own samples (one batch of all 40: steps = 1)."""
    mod = fedsel_stats_mod(Net, lambda ctx: load_data(0, 4, 64)[0], domain="a", max_samples=64)
    torch.manual_seed(0)
    net = Net()
    arrays = ArrayRecord(net.state_dict())
    g = np.random.default_rng(0).normal(size=(2, sum(p.numel() for p in net.parameters())))
    cfg = ConfigRecord({"lr": 0.1, PHASE_KEY: "probe"})
    record = RecordDict({"arrays": arrays, "config": cfg,
                         "fedsel-gd": ArrayRecord({"g": Array(g.astype(np.float32))})})  # fmt: skip
    grid = LocalGrid(lambda msg, ctx: mod(msg, ctx, _refuse_training), 1)
    (reply,) = grid.send_and_receive([grid.create_message(record, "train", 1001, "")])
    m = reply.content["metrics"]
    data = load_data(0, 4, 64)[0].dataset
    x = torch.stack([data[i]["img"] for i in range(len(data))])
    y = torch.tensor([data[i]["label"] for i in range(len(data))])
    net.zero_grad()
    nn.functional.cross_entropy(net(x), y).backward()
    grad = torch.cat([p.grad.reshape(-1) for p in net.parameters()]).double().numpy()
    assert m["steps"] == 1 and m["num-examples"] == 40 and m["partition-id"] == 0
    np.testing.assert_allclose(m["x"], 0.1 * (g @ grad), rtol=1e-4, atol=1e-8)
    ref = g.sum(0)
    cos = grad @ ref / (np.linalg.norm(grad) * np.linalg.norm(ref))
    assert m["cos-g"] == pytest.approx(cos, rel=1e-4)
    assert reply.content["fedsel"]["domain"] == "a"


def _refuse_training(msg, ctx):
    raise AssertionError("the probe pass must not call the train function")


def test_a_probe_no_node_can_answer_says_why():
    """A node without a domain cannot answer the probe: the round's error names the reason."""
    app = ClientApp(mods=[fedsel_stats_mod(Net, quickstart_data(load_data))])
    app.train()(_train)
    grid = LocalGrid(app, N_NODES, run_config={"batch-size": 16, "local-epochs": 1})
    strategy = FedselStrategy("maxmin:2@probe", k=2, fraction_evaluate=0.0,
                              server=ServerSide(evaluate_candidates=evaluate_candidates,
                                                validation_gradients=validation_gradients), nodes=NodePolicy(wait_for_nodes=0.1, on_missing="error", train_config={"lr": 0.05}))  # fmt: skip
    with pytest.raises(FlowerRunError, match="no node answered the probe.*no domain"):
        strategy.start(grid=grid, initial_arrays=ArrayRecord(Net().state_dict()), num_rounds=1)
