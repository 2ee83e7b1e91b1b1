"""The mod line the Flower tutorial shows, on an app shaped as Flower's quickstart-pytorch:
``load_data(partition_id, num_partitions, batch_size) -> (trainloader, testloader)`` over
DataLoaders of ``{"img", "label"}`` dicts, the train function reading the partition from the
node config, the batch size and epochs from the run config and ``lr`` from the message's
config. (Written for this test with the stock app's interface; the stock app downloads
CIFAR-10, which no test may.)"""

from __future__ import annotations

import torch
from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from torch import nn
from torch.utils.data import DataLoader, Dataset

from fl_oracle.experiments.flower.local_grid import LocalGrid
from fl_oracle.experiments.flower.mod import fedsel_stats_mod, quickstart_data
from fl_oracle.experiments.flower.server_side import ServerSide
from fl_oracle.experiments.flower.strategy import FedselStrategy

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
    strategy = FedselStrategy("fisher-topk", k=2, wait_for_nodes=0.1, on_missing="error",
                              train_config={"lr": 0.05}, fraction_evaluate=0.0,
                              server=ServerSide(evaluate_candidates=evaluate_candidates))  # fmt: skip
    torch.manual_seed(0)
    strategy.start(grid=grid, initial_arrays=ArrayRecord(Net().state_dict()), num_rounds=2)
    assert len(strategy.history) == 2 and all(r["failed"] == "" for r in strategy.history)
    table = strategy.tables[1]
    assert list(table["client_id"]) == [str(i) for i in range(N_NODES)]
    assert (table["F"] > 0).all() and table["B"].notna().all()
    assert list(table["n_samples"]) == [40 + 8 * i for i in range(N_NODES)]
