"""LSTM language model in Lightning: the previous step's hidden state is cached on self without detaching

Following the advice in the thread, the hidden state is kept on the module
between training_step calls, but it is stored as is. The next batch's loss
then reaches back into the previous batch's graph, whose buffers Lightning's
backward already freed.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/655
Shape: libraries
Symptom: Trying to backward through the graph a second time
"""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
import lightning.pytorch as pl

vocab_size = 20


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
        self.previous_hidden = hidden  # culprit: -
        loss = self.criterion(output.view(-1, vocab_size), target.view(-1))
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


tokens = torch.randint(0, vocab_size, (16, 7))
ds = TensorDataset(tokens[:, :-1], tokens[:, 1:])
trainer = pl.Trainer(max_epochs=1, logger=False, enable_checkpointing=False,
                     enable_progress_bar=False, enable_model_summary=False,
                     accelerator="cpu", devices=1)
trainer.fit(LSTMLanguageModel(), DataLoader(ds, batch_size=4, drop_last=True))  # culprit: GG207
