"""Prints neuralforecast TemporalNorm statistics for the window used in
tests/data/scalers_test.cpp (run with the peers venv: /opt/peers/bin/python). Not used by CI."""
import torch
from neuralforecast.common._scalers import TemporalNorm

x = torch.tensor([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 100.0, -7.0])
mask = torch.tensor([1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0])  # last h = 2 masked
for kind in ["standard", "robust", "minmax", "minmax1", "invariant"]:
    s = TemporalNorm(scaler_type=kind, dim=1)
    z = s.transform(x.view(1, -1, 1), mask.view(1, -1, 1))
    print(kind, f"{s.x_shift.item():.9g}", f"{s.x_scale.item():.9g}",
          " ".join(f"{v:.9g}" for v in z.flatten().tolist()))
flat = torch.tensor([5.0, 5.0, 5.0, 9.0])
s = TemporalNorm(scaler_type="robust", dim=1)
s.transform(flat.view(1, -1, 1), torch.ones(1, 4, 1))
print("robust_mad0", f"{s.x_shift.item():.9g}", f"{s.x_scale.item():.9g}")
