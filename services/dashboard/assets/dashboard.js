// The dashboard's own script: nothing runs inline (CSP); htmx does the live parts.
