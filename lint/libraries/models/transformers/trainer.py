"""A model of ``transformers.trainer`` for gradguard: what ``Trainer`` does to autograd
around the user's model and the methods a subclass overrides. Checked against
transformers 5.24.0 (``trainer.py``, ``tests/library_probes/transformers_trainer.py``).

- ``train()`` builds an ``AdamW`` over the parameters that require grad (unless
  ``optimizers=`` gave one), zeroes the model's gradients (``model.zero_grad()``), then
  per batch calls ``training_step(model, inputs, num_items_in_batch)``; on every
  ``gradient_accumulation_steps``-th batch (and the epoch's last) it clips the gradients
  (``max_grad_norm``), steps the optimizer (and the scheduler) and zeroes the model's
  gradients.
- ``training_step`` puts the model in training mode, calls ``compute_loss(model,
  inputs, num_items_in_batch=...)`` with grad mode on, divides the loss by
  ``gradient_accumulation_steps`` and backpropagates it (``accelerator.backward``: one
  ``loss.backward()`` without ``retain_graph``), and returns ``loss.detach()``.
- ``compute_loss`` calls ``model(**inputs)`` and takes ``outputs["loss"]`` (a dict, a
  ``ModelOutput``) or ``outputs[0]``; with ``return_outputs=True`` it returns both.
- ``evaluate()`` and ``predict()`` put the model in eval mode and run
  ``prediction_step(model, inputs, prediction_loss_only)`` per batch, which under
  ``torch.no_grad()`` (never inference mode) calls ``compute_loss(model, inputs,
  return_outputs=True)`` where the batch has ``labels``, else ``model(**inputs)``.
- Batches: ``data_collator`` (default: each key's values stacked) of consecutive
  dataset items, ``per_device_*_batch_size`` at a time.

Left out (unknown to the engine, as without a model): the real Trainer's shuffling,
label names read from the model's ``forward`` signature (``labels`` here), callbacks,
logging, saving, mixed precision, distributed training, ``compute_loss_func``, label
smoothing, evaluation during ``train()``, ``num_items_in_batch`` (None here), metrics.
"""

import torch

from transformers.training_args import TrainingArguments


def _default_collator(features):
    first = features[0]
    return {key: torch.stack([feature[key] for feature in features]) for key in first}


class Trainer:
    def __init__(self, model=None, args=None, data_collator=None, train_dataset=None,
                 eval_dataset=None, processing_class=None, model_init=None,
                 compute_loss_func=None, compute_metrics=None, callbacks=None,
                 optimizers=(None, None), **kwargs):
        self.model = model
        self.args = args if args is not None else TrainingArguments()
        self.data_collator = data_collator if data_collator is not None \
            else _default_collator
        self.train_dataset = train_dataset
        self.eval_dataset = eval_dataset
        self.optimizer, self.lr_scheduler = optimizers

    def _batches(self, dataset, batch_size):
        for start in range(0, len(dataset), batch_size):
            yield self.data_collator([dataset[index] for index in
                                      range(start, min(start + batch_size, len(dataset)))])

    def get_train_dataloader(self):
        return list(self._batches(self.train_dataset, self.args.per_device_train_batch_size))

    def get_eval_dataloader(self, eval_dataset=None):
        dataset = eval_dataset if eval_dataset is not None else self.eval_dataset
        return list(self._batches(dataset, self.args.per_device_eval_batch_size))

    def create_optimizer(self):
        if self.optimizer is None:
            self.optimizer = torch.optim.AdamW(
                [p for p in self.model.parameters() if p.requires_grad],
                lr=self.args.learning_rate)
        return self.optimizer

    def train(self, resume_from_checkpoint=None, trial=None, **kwargs):
        model = self.model
        self.create_optimizer()
        batches = self.get_train_dataloader()
        accumulation = self.args.gradient_accumulation_steps
        epochs = int(self.args.num_train_epochs) if self.args.max_steps <= 0 else 1
        model.zero_grad()
        for epoch in range(epochs):
            for step, inputs in enumerate(batches):
                self.training_step(model, inputs, None)
                if (step + 1) % accumulation == 0 or step + 1 == len(batches):
                    if self.args.max_grad_norm:
                        torch.nn.utils.clip_grad_norm_(model.parameters(),
                                                       self.args.max_grad_norm)
                    self.optimizer.step()
                    if self.lr_scheduler is not None:
                        self.lr_scheduler.step()
                    model.zero_grad()

    def training_step(self, model, inputs, num_items_in_batch=None):
        model.train()
        loss = self.compute_loss(model, inputs, num_items_in_batch=num_items_in_batch)
        loss = loss / self.args.gradient_accumulation_steps
        loss.backward()
        return loss.detach()

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        outputs = model(**inputs)
        loss = outputs["loss"] if isinstance(outputs, dict) else outputs[0]
        if return_outputs:
            return loss, outputs
        return loss

    def prediction_step(self, model, inputs, prediction_loss_only, ignore_keys=None):
        with torch.no_grad():
            if "labels" in inputs:
                loss, outputs = self.compute_loss(model, inputs, return_outputs=True)
                return loss.detach().mean(), outputs, inputs["labels"]
            outputs = model(**inputs)
            return None, outputs, None

    def _evaluation_loop(self, batches):
        model = self.model
        model.eval()
        for inputs in batches:
            self.prediction_step(model, inputs, self.args.prediction_loss_only)

    def evaluate(self, eval_dataset=None, ignore_keys=None, metric_key_prefix="eval"):
        self._evaluation_loop(self.get_eval_dataloader(eval_dataset))
        return {}

    def predict(self, test_dataset, ignore_keys=None, metric_key_prefix="test"):
        self._evaluation_loop(list(self._batches(test_dataset,
                                                 self.args.per_device_eval_batch_size)))
        return None
