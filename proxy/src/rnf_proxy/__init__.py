"""The split-TCP proxy: transparent interception, per-UE window controllers, and their enforcement."""
