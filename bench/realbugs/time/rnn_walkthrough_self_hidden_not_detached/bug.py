"""RNN-walkthrough's Model keeping its hidden state on self across forward calls, as the
reporter tried: self.hidden from the last epoch still hangs on that epoch's graph, which
its backward freed.

Source: https://github.com/gabrielloye/RNN-walkthrough/issues/3
Shape: time
Symptom: Trying to backward through the graph a second time
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, input_size, output_size, hidden_dim, n_layers, batch_size):
        super().__init__()
        self.hidden_dim, self.n_layers = hidden_dim, n_layers
        self.rnn = nn.RNN(input_size, hidden_dim, n_layers, batch_first=True)
        self.fc = nn.Linear(hidden_dim, output_size)
        self.hidden = self.init_hidden(batch_size)

    def forward(self, x):
        out, self.hidden = self.rnn(x, self.hidden)
        out = out.contiguous().view(-1, self.hidden_dim)
        return self.fc(out), self.hidden

    def init_hidden(self, batch_size):
        return torch.zeros(self.n_layers, batch_size, self.hidden_dim)


torch.manual_seed(0)
dict_size, seq_len, batch_size = 6, 5, 3
input_seq = torch.nn.functional.one_hot(torch.randint(0, dict_size, (batch_size, seq_len)), dict_size).float()
target_seq = torch.randint(0, dict_size, (batch_size, seq_len))
model = Model(input_size=dict_size, output_size=dict_size, hidden_dim=12, n_layers=1, batch_size=batch_size)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)

for epoch in range(1, 3):
    optimizer.zero_grad()
    output, hidden = model(input_seq)
    loss = criterion(output, target_seq.view(-1).long())
    loss.backward()  # culprit: GG207
    optimizer.step()
