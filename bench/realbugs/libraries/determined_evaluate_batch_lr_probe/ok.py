"""evaluate_batch re-enables autograd around the linear probe: Determined validates under @torch.no_grad(),
so PyGCL's LREvaluator (which trains a classifier on the detached embeddings) needs torch.enable_grad()."""
from types import SimpleNamespace
import torch
from torch import nn
from torch.optim import Adam

# --- PyGCL GCL/eval/logistic_regression.py + eval.py (f1_score: micro-F1 of single-label = accuracy) ---
class LRModel(nn.Module):
    def __init__(self, num_features, num_classes):
        super().__init__()
        self.fc = nn.Linear(num_features, num_classes)
    def forward(self, x):
        return self.fc(x)

class LREvaluator:
    def __init__(self, num_epochs=40, learning_rate=0.01, weight_decay=0.0, test_interval=20):
        self.num_epochs, self.learning_rate, self.weight_decay, self.test_interval = (
            num_epochs, learning_rate, weight_decay, test_interval)
    def __call__(self, x, y, split):
        return self.evaluate(x, y, split)

    def evaluate(self, x, y, split):
        x = x.detach()
        classifier = LRModel(x.size(1), y.max().item() + 1)
        optimizer = Adam(classifier.parameters(), lr=self.learning_rate, weight_decay=self.weight_decay)
        output_fn, criterion = nn.LogSoftmax(dim=-1), nn.NLLLoss()
        best_val_micro = best_test_micro = 0
        for epoch in range(self.num_epochs):
            classifier.train()
            optimizer.zero_grad()
            loss = criterion(output_fn(classifier(x[split['train']])), y[split['train']])
            loss.backward()
            optimizer.step()
            if (epoch + 1) % self.test_interval == 0:
                classifier.eval()
                test_micro = (classifier(x[split['test']]).argmax(-1) == y[split['test']]).float().mean().item()
                val_micro = (classifier(x[split['valid']]).argmax(-1) == y[split['valid']]).float().mean().item()
                if val_micro >= best_val_micro:
                    best_val_micro, best_test_micro = val_micro, test_micro
        return {'micro_f1': best_test_micro}

# --- determined harness/determined/pytorch/_pytorch_trial.py: the trial controller's validation ---
class PyTorchTrialController:
    def __init__(self, trial, validation_loader):
        self.trial, self.validation_loader = trial, validation_loader

    @torch.no_grad()
    def _validate(self):
        self.trial.model.eval()
        return [self.trial.evaluate_batch(batch=batch) for batch in self.validation_loader]

# --- user's trial: an unsupervised graph encoder evaluated with a linear probe ---
class GraphEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 16)
    def forward(self, x, edge_index):
        adj = torch.eye(x.size(0)).index_put((edge_index[0], edge_index[1]), torch.tensor(1.0))
        return torch.relu(adj @ self.lin(x))

class GraceTrial:
    def __init__(self):
        self.model = GraphEncoder()
        idx = torch.randperm(40)
        self.split = {'train': idx[:10], 'valid': idx[10:20], 'test': idx[20:]}

    def evaluate_batch(self, batch):
        z = self.model(batch.x, batch.edge_index)
        with torch.enable_grad():
            result = LREvaluator()(z, batch.y, self.split)
        return {"micro_f1": result["micro_f1"]}

torch.manual_seed(0)
batch = SimpleNamespace(x=torch.randn(40, 8), edge_index=torch.randint(0, 40, (2, 80)), y=torch.randint(0, 3, (40,)))
metrics = PyTorchTrialController(GraceTrial(), [batch])._validate()
assert 0.0 <= metrics[0]["micro_f1"] <= 1.0
print(metrics)
