"""Reports for people: console lines, the live display, and the HTML report with its charts."""
