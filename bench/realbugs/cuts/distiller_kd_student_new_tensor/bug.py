"""Distiller knowledge distillation: the student's logits are copied with out.new_tensor(out, requires_grad=True), so the distillation loss never reaches the student

Source: https://github.com/IntelLabs/distiller/issues/234
Shape: cuts
Symptom: the student never gets a gradient from the distillation loss
"""
from collections import namedtuple
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
DistillationLossWeights = namedtuple('DistillationLossWeights', ['distill', 'student', 'teacher'])


class KnowledgeDistillationPolicy:
    """After distiller/knowledge_distillation.py (2019): wraps the student's forward."""
    def __init__(self, student_model, teacher_model, temperature=1.0,
                 loss_weights=DistillationLossWeights(0.5, 0.5, 0)):
        self.model = student_model
        self.teacher = teacher_model
        self.temperature = temperature
        self.loss_wts = loss_weights
        self.last_students_logits = None
        self.last_teacher_logits = None

    def forward(self, *inputs):
        with torch.no_grad():
            self.last_teacher_logits = self.teacher(*inputs)
        out = self.model(*inputs)
        self.last_students_logits = out.new_tensor(out, requires_grad=True)  # culprit: -
        return out

    def before_backward_pass(self, loss):
        soft_log_probs = F.log_softmax(self.last_students_logits / self.temperature, dim=1)
        soft_targets = F.softmax(self.last_teacher_logits / self.temperature, dim=1)
        distillation_loss = F.kl_div(soft_log_probs, soft_targets.detach(), reduction='sum') / soft_log_probs.shape[0]
        return self.loss_wts.student * loss + self.loss_wts.distill * distillation_loss


student = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
teacher = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 4))
# pure distillation: --kd-student-wt 0 --kd-distill-wt 1
kd_policy = KnowledgeDistillationPolicy(student, teacher, temperature=2.0,
                                        loss_weights=DistillationLossWeights(1.0, 0.0, 0))
optimizer = torch.optim.SGD(student.parameters(), lr=0.1)
criterion = nn.CrossEntropyLoss()

inputs, target = torch.randn(6, 8), torch.randint(0, 4, (6,))
output = kd_policy.forward(inputs)
loss = criterion(output, target)
loss = kd_policy.before_backward_pass(loss)
optimizer.zero_grad()
loss.backward()
grads = [p.grad for p in student.parameters()]
assert all(g is not None and g.abs().sum() > 0 for g in grads), "the student never gets a gradient from the distillation loss"
optimizer.step()
