"""Composer's trainer, for a model whose loss() returns a tuple of losses, calls backward
on each loss in turn; the losses share the model's graph, which the first backward frees.

Source: https://github.com/mosaicml/composer/pull/1240
Shape: new-errors
Symptom: Trying to backward through the graph a second time
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


def ensure_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


class MultiLossModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(6, 16), nn.ReLU())
        self.head = nn.Linear(16, 3)

    def forward(self, batch):
        inputs, _ = batch
        return self.head(self.trunk(inputs))

    def loss(self, outputs, batch):
        _, targets = batch
        return F.cross_entropy(outputs, targets), 0.01 * outputs.pow(2).mean()


class State:
    def __init__(self, model, optimizer):
        self.model, self.optimizers = model, [optimizer]
        self.outputs = self.loss = None


class Trainer:
    def __init__(self, model, optimizer):
        self.state = State(model, optimizer)

    def _train_microbatch(self, batch, current_batch_size):
        microbatch_num_samples = batch[0].shape[0]
        self.state.outputs = self.state.model(batch)
        self.state.loss = self.state.model.loss(self.state.outputs, batch)
        total_loss = 0.0
        for loss in ensure_tuple(self.state.loss):
            loss.mul_(microbatch_num_samples / current_batch_size)
            total_loss += loss.detach().clone()
        for loss in ensure_tuple(self.state.loss):
            loss.backward()  # culprit: GG207
        return total_loss

    def fit(self, dataloader):
        for batch in dataloader:
            for optimizer in self.state.optimizers:
                optimizer.zero_grad()
            self._train_microbatch(batch, current_batch_size=batch[0].shape[0])
            for optimizer in self.state.optimizers:
                optimizer.step()


torch.manual_seed(0)
model = MultiLossModel()
trainer = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1))
trainer.fit([(torch.randn(4, 6), torch.randint(0, 3, (4,))) for _ in range(2)])
