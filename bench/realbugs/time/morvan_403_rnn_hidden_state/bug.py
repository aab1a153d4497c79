"""403_RNN_regressor without `h_state = h_state.data`: the hidden state carried to the
next step still hangs on the previous step's graph, which backward already freed.

Source: https://github.com/MorvanZhou/PyTorch-Tutorial/issues/57
Shape: time
Symptom: Trying to backward through the graph a second time
"""
import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(1)
TIME_STEP, INPUT_SIZE, LR = 10, 1, 0.02


class RNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.RNN(input_size=INPUT_SIZE, hidden_size=32, num_layers=1, batch_first=True)
        self.out = nn.Linear(32, 1)

    def forward(self, x, h_state):
        r_out, h_state = self.rnn(x, h_state)
        outs = []
        for time_step in range(r_out.size(1)):
            outs.append(self.out(r_out[:, time_step, :]))
        return torch.stack(outs, dim=1), h_state


rnn = RNN()
optimizer = torch.optim.Adam(rnn.parameters(), lr=LR)
loss_func = nn.MSELoss()

h_state = None
for step in range(3):
    start, end = step * np.pi, (step + 1) * np.pi
    steps = np.linspace(start, end, TIME_STEP, dtype=np.float32, endpoint=False)
    x = torch.from_numpy(np.sin(steps)[np.newaxis, :, np.newaxis])
    y = torch.from_numpy(np.cos(steps)[np.newaxis, :, np.newaxis])

    prediction, h_state = rnn(x, h_state)
    loss = loss_func(prediction, y)
    optimizer.zero_grad()
    loss.backward()  # culprit: GG207
    optimizer.step()
