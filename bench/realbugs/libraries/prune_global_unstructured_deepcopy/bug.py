"""DEN trainer: deepcopy of a model pruned with prune.global_unstructured fails

The model registers L1 pruning on the Linear layers of its nn.Sequential encoder in
__init__. torch.nn.utils.prune turns each `weight` into a plain attribute computed as
weight_orig * weight_mask (a non-leaf tensor with a grad_fn), so copy.deepcopy of the
model, done by the trainer to keep a snapshot, hits a tensor that is not a graph leaf.

Source: https://github.com/pytorch/pytorch/issues/37322
Shape: libraries
Symptom: Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol
"""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.prune as prune

pruning_threshold = 0.3


class tester(nn.Module):
    def __init__(self, sizes=(8, 16, 16, 4)):
        super().__init__()
        # Encoder
        encoder_layers = []
        for d_in, d_out in zip(sizes[:-1], sizes[1:]):
            encoder_layers += [nn.Linear(d_in, d_out), nn.ReLU()]
        self.tester = nn.Sequential(*encoder_layers[:-1])

        # Set the pruning method
        parameters_to_prune = []
        for param in self.tester:
            if isinstance(param, nn.Linear):
                parameters_to_prune.append((param, "weight"))

        # Add pruning
        prune.global_unstructured(
            parameters_to_prune,
            pruning_method=prune.L1Unstructured,
            amount=pruning_threshold,
        )

    def forward(self, x):
        return self.tester(x)


class DENTrainer:
    def __init__(self, model):
        self.model = model
        self.device = torch.device("cpu")
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def train_tasks(self, tasks, with_den=True):
        for x, y in tasks:
            model_copy = copy.deepcopy(self.model).to(self.device) if with_den else None  # culprit: -
            self.optimizer.zero_grad()
            loss = F.cross_entropy(self.model(x), y)
            loss.backward()
            self.optimizer.step()
            if model_copy is not None:
                with torch.no_grad():
                    drift = (model_copy(x) - self.model(x)).abs().mean().item()
                print(f"loss {loss.item():.4f} drift {drift:.4f}")


def main():
    torch.manual_seed(0)
    model = tester()
    tasks = [(torch.randn(6, 8), torch.randint(0, 4, (6,))) for _ in range(3)]
    DENTrainer(model).train_tasks(tasks)


if __name__ == "__main__":
    main()
