-- The shop's database as every run of refund-desk-eval starts with it.
CREATE TABLE orders (
  id TEXT PRIMARY KEY,
  customer TEXT NOT NULL,
  amount REAL NOT NULL,
  status TEXT NOT NULL
);
CREATE TABLE refunds (
  id INTEGER PRIMARY KEY,
  order_id TEXT NOT NULL REFERENCES orders (id),
  amount REAL NOT NULL,
  reason TEXT NOT NULL
);
INSERT INTO orders VALUES
  ('A-1042', 'dana@example.com', 25.0, 'delivered'),
  ('A-1043', 'li@example.com', 90.0, 'delivered'),
  ('A-1044', 'sam@example.com', 12.5, 'shipped');
