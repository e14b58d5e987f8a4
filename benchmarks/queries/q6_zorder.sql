-- Q6-like two-column range: one week of shipments at a narrow discount band.
-- tuned: lineitem=tuned_lineitem_by_shipdate
SELECT sum(l_extendedprice * l_discount) AS revenue, count(*) AS lines
FROM lineitem
WHERE l_shipdate >= DATE '1995-03-01'
  AND l_shipdate < DATE '1995-03-08'
  AND l_discount BETWEEN 0.05 AND 0.07
