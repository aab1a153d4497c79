"""pytorch-tutorial's RNN language model without `states = detach(states)`: the LSTM's
(h, c) carried from one chunk to the next still hang on the previous chunk's graph, which
its backward freed.

Source: https://github.com/yunjey/pytorch-tutorial/issues/90
Shape: time
Symptom: Trying to backward through the graph a second time
"""
import torch
import torch.nn as nn

embed_size, hidden_size, num_layers = 8, 16, 1
num_epochs, batch_size, seq_length, vocab_size = 1, 2, 5, 20


class RNNLM(nn.Module):
    def __init__(self, vocab_size, embed_size, hidden_size, num_layers):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_size)
        self.lstm = nn.LSTM(embed_size, hidden_size, num_layers, batch_first=True)
        self.linear = nn.Linear(hidden_size, vocab_size)

    def forward(self, x, h):
        x = self.embed(x)
        out, h = self.lstm(x, h)
        out = out.contiguous().view(out.size(0) * out.size(1), out.size(2))
        return self.linear(out), h


torch.manual_seed(0)
ids = torch.randint(0, vocab_size, (batch_size, 16))
model = RNNLM(vocab_size, embed_size, hidden_size, num_layers)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.002)

for epoch in range(num_epochs):
    states = (torch.zeros(num_layers, batch_size, hidden_size),
              torch.zeros(num_layers, batch_size, hidden_size))
    for i in range(0, ids.size(1) - seq_length, seq_length):
        inputs = ids[:, i:i + seq_length]
        targets = ids[:, (i + 1):(i + 1) + seq_length].contiguous()
        model.zero_grad()
        outputs, states = model(inputs, states)
        loss = criterion(outputs, targets.view(-1))
        loss.backward()  # culprit: GG207
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        optimizer.step()
