nvidia-smi --query-gpu=name,driver_version --format=csv
OUT=$OUT SUITE_TIMEOUT=420 SUITE_DEADLINE=380 bash scripts/device_suite.sh plans --set heldout56
