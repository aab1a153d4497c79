"""A model of ``transformers.training_args`` for gradguard: the ``TrainingArguments`` the
Trainer model reads. Checked against transformers 5.24.0 (``training_args.py``).

Left out: every other argument (logging, saving, precision, devices, schedulers), taken
and ignored."""


class TrainingArguments:
    def __init__(self, output_dir=None, num_train_epochs=3.0, max_steps=-1,
                 per_device_train_batch_size=8, per_device_eval_batch_size=8,
                 gradient_accumulation_steps=1, learning_rate=5e-5, max_grad_norm=1.0,
                 prediction_loss_only=False, **kwargs):
        self.output_dir = output_dir
        self.num_train_epochs = num_train_epochs
        self.max_steps = max_steps
        self.per_device_train_batch_size = per_device_train_batch_size
        self.per_device_eval_batch_size = per_device_eval_batch_size
        self.gradient_accumulation_steps = gradient_accumulation_steps
        self.learning_rate = learning_rate
        self.max_grad_norm = max_grad_norm
        self.prediction_loss_only = prediction_loss_only
