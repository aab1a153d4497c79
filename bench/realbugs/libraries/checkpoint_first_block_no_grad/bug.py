"""CIFAR10 model with torch.utils.checkpoint: the first conv block never trains

The forward checkpoints cnn_block_1 on the raw image batch. With the reentrant
checkpoint (the default at the time), whether the block's output requires grad is
decided only by its tensor inputs; the image does not require grad, so the output
is cut from cnn_block_1's parameters and they never get a gradient.

Source: https://discuss.pytorch.org/t/use-of-torch-utils-checkpoint-checkpoint-causes-simple-model-to-diverge/116271
Shape: libraries
Symptom: cnn_block_1 never gets a gradient under checkpoint
"""
import torch
import torch.nn as nn
import torch.utils.checkpoint


class CIFAR10Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.cnn_block_1 = nn.Sequential(*[
            nn.Conv2d(3, 8, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(8, 16, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2)
        ])
        self.dropout_1 = nn.Dropout(0.25)
        self.cnn_block_2 = nn.Sequential(*[
            nn.Conv2d(16, 16, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(16, 16, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2)
        ])
        self.dropout_2 = nn.Dropout(0.25)
        self.flatten = lambda inp: torch.flatten(inp, 1)
        self.linearize = nn.Sequential(*[
            nn.Linear(16 * 2 * 2, 32),
            nn.ReLU()
        ])
        self.dropout_3 = nn.Dropout(0.5)
        self.out = nn.Linear(32, 10)

    def forward(self, X):
        X = torch.utils.checkpoint.checkpoint(self.cnn_block_1, X, use_reentrant=True)  # culprit: GG307
        X = self.dropout_1(X)
        X = torch.utils.checkpoint.checkpoint(self.cnn_block_2, X, use_reentrant=True)  # culprit: GG307
        X = self.dropout_2(X)
        X = self.flatten(X)
        X = self.linearize(X)
        X = self.dropout_3(X)
        X = self.out(X)
        return X


torch.manual_seed(0)
model = CIFAR10Model()
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

for epoch in range(2):
    X_batch = torch.randn(4, 3, 8, 8)
    y_batch = torch.randint(0, 10, (4,))
    optimizer.zero_grad()
    y_pred = model(X_batch)
    loss = criterion(y_pred, y_batch)
    loss.backward()
    optimizer.step()
    print(f"epoch {epoch} loss {loss.item():.4f}")

assert model.cnn_block_1[0].weight.grad is not None, "cnn_block_1 never gets a gradient under checkpoint"
