"""Publishing: PR bodies now; pushing, PRs, labels, check runs and merges with the PR
lifecycle milestone (docs/roadmap.md). Only this room and ``app/github`` write to GitHub."""
