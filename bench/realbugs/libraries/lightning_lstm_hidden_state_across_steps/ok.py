"""LSTM language model in Lightning: the cached hidden state is detached (truncated BPTT)

Detaching the hidden state before keeping it on self carries its value into the
next batch while cutting the graph at the batch boundary, as in the raw loop
of the thread (`hidden = detach_tensors(hidden)`).
"""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
import lightning.pytorch as pl

vocab_size = 20


def detach_tensors(hidden):
    return tuple(h.detach() for h in hidden)


class LSTMLanguageModel(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, 8)
        self.lstm = nn.LSTM(8, 16, batch_first=True)
        self.fc = nn.Linear(16, vocab_size)
        self.criterion = nn.CrossEntropyLoss()
        self.previous_hidden = None  # cache

    def forward(self, text, hidden):
        out, hidden = self.lstm(self.embed(text), hidden)
        return self.fc(out), hidden

    def training_step(self, batch, batch_idx):
        text, target = batch
        output, hidden = self(text, self.previous_hidden)
        self.previous_hidden = detach_tensors(hidden)
        loss = self.criterion(output.view(-1, vocab_size), target.view(-1))
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


tokens = torch.randint(0, vocab_size, (16, 7))
ds = TensorDataset(tokens[:, :-1], tokens[:, 1:])
trainer = pl.Trainer(max_epochs=1, logger=False, enable_checkpointing=False,
                     enable_progress_bar=False, enable_model_summary=False,
                     accelerator="cpu", devices=1)
trainer.fit(LSTMLanguageModel(), DataLoader(ds, batch_size=4, drop_last=True))
