CREATE TABLE orders (id TEXT PRIMARY KEY, amount REAL, status TEXT);
CREATE TABLE refunds (id INTEGER PRIMARY KEY, order_id TEXT, amount REAL, reason TEXT);
INSERT INTO orders VALUES ('A-1042', 25.0, 'delivered'), ('B-7', 90.0, 'delivered');
