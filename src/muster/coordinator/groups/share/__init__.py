"""KIP-932 share groups: membership, the simple assignor and their records."""
