"""Transparency-log building blocks: RFC 6962 Merkle trees and C2SP signed notes
(pure, no storage)."""
