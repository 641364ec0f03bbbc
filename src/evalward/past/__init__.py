"""What evalward keeps of past runs: each Eval's status (`status`, updated by a run through
`status_run`), the local runs' score history (`history`) and the default branch's score log
that report.html's trends read (`trend`)."""
