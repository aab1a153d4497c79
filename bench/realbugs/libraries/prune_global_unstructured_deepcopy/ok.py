"""DEN trainer snapshot of a pruned model, built fresh and filled from state_dict

Right because the snapshot is a new `tester()` (which registers the same pruning
reparametrization) loaded with `load_state_dict(self.model.state_dict())`: that copies
the leaf tensors weight_orig and the weight_mask buffers, and never tries to deepcopy
the computed, non-leaf `weight` attribute that torch.nn.utils.prune keeps on each layer.
"""
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

    def snapshot(self):
        model_copy = tester()
        model_copy.load_state_dict(self.model.state_dict())
        return model_copy.to(self.device)

    def train_tasks(self, tasks, with_den=True):
        for x, y in tasks:
            model_copy = self.snapshot() if with_den else None
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
