"""A program that imports Lightning and transformers, for ``bench_change.py --libraries``:
fine-tuning a small BERT classifier, built from a config (no download), in a
LightningModule with a validation loop. Correct code: nothing to find."""
import lightning.pytorch as pl
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from transformers import BertConfig, BertModel


class Classifier(pl.LightningModule):
    def __init__(self, classes=3):
        super().__init__()
        config = BertConfig(vocab_size=100, hidden_size=16, num_hidden_layers=1,
                            num_attention_heads=2, intermediate_size=32)
        self.encoder = BertModel(config)
        self.head = nn.Linear(config.hidden_size, classes)

    def forward(self, ids):
        hidden = self.encoder(input_ids=ids).last_hidden_state
        return self.head(hidden[:, 0])

    def training_step(self, batch, batch_idx):
        ids, labels = batch
        loss = nn.functional.cross_entropy(self(ids), labels)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        ids, labels = batch
        accuracy = (self(ids).argmax(-1) == labels).float().mean()
        self.log("val_acc", accuracy)

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)


if __name__ == "__main__":
    data = TensorDataset(torch.randint(0, 100, (8, 6)), torch.randint(0, 3, (8,)))
    trainer = pl.Trainer(max_epochs=1, logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False,
                         accelerator="cpu")
    trainer.fit(Classifier(), DataLoader(data, batch_size=4), DataLoader(data, batch_size=4))
