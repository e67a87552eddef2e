"""Reports for people: console lines now; HTML and charts later."""
