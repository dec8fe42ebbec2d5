//! pullcheck
