"""torchMoji fine-tuning: the model returns outputs.data, the user wraps the loss in Variable(loss, requires_grad=True) to silence the error, and the loss stays flat

Source: https://github.com/huggingface/torchMoji/issues/21
Shape: cuts
Symptom: the fine-tuned model never gets a gradient
"""
import torch
import torch.nn as nn
from torch.autograd import Variable

torch.manual_seed(0)


class TorchMoji(nn.Module):
    """After torchmoji/model_def.py: embedding, bi-LSTM, attention pooling, output layer."""
    def __init__(self, nb_classes, nb_tokens, embed_dim=16, hidden=8, return_tensor=True):
        super().__init__()
        self.return_tensor = return_tensor
        self.embed = nn.Embedding(nb_tokens, embed_dim)
        self.lstm_0 = nn.LSTM(embed_dim, hidden, batch_first=True, bidirectional=True)
        self.attention_vector = nn.Parameter(torch.randn(2 * hidden) * 0.05)
        self.output_layer = nn.Sequential(nn.Linear(2 * hidden, nb_classes), nn.Softmax(dim=1))

    def forward(self, input_seqs):
        x = self.embed(input_seqs)
        lstm_out, _ = self.lstm_0(x)
        logits = lstm_out.matmul(self.attention_vector)
        attentions = torch.softmax(logits, dim=1)
        representations = (lstm_out * attentions.unsqueeze(-1)).sum(dim=1)
        outputs = self.output_layer(representations)
        # Adapt return format if needed
        if self.return_tensor:
            outputs = outputs.data  # culprit: -
        return outputs


def fit_model(model, loss_op, optim_op, X_train, y_train, nb_epochs=2):
    model.train()
    for epoch in range(nb_epochs):
        optim_op.zero_grad()
        output = model(X_train)
        loss = loss_op(output, y_train)
        loss = Variable(loss, requires_grad=True)  # culprit: GG304
        loss.backward()
        optim_op.step()
    return model


model = TorchMoji(nb_classes=2, nb_tokens=30)
X_train = torch.randint(1, 30, (4, 7))
y_train = torch.tensor([[0.0, 1.0], [1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
loss_op = nn.BCELoss()
optim_op = torch.optim.Adam(model.parameters(), lr=1e-3)
fit_model(model, loss_op, optim_op, X_train, y_train)
assert all(p.grad is not None for p in model.parameters()), "the fine-tuned model never gets a gradient"
