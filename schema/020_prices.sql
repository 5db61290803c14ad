-- SPDX-License-Identifier: MIT
-- Instance prices, for price/performance: what an instance type costs per
-- hour in one region and currency from a day on. Imported from CSV by
-- `fleetbench prices import` (docs/queries.md); a row is never made up,
-- so an instance type without one is "unpriced". The current price of a
-- (provider, instance_type, region, currency) is its row with the latest
-- valid_from on or before today (instance_prices_current,
-- schema/functions/48_prices.sql); rows valid from a later day wait.

CREATE TABLE instance_prices (
	provider text NOT NULL
		CHECK (provider <> '' AND provider = btrim(provider)),
	instance_type text NOT NULL
		CHECK (instance_type <> '' AND instance_type = btrim(instance_type)),
	region text NOT NULL
		CHECK (region <> '' AND region = btrim(region)),
	currency text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
	price_per_hour numeric NOT NULL CHECK (price_per_hour > 0),
	valid_from date NOT NULL,
	imported_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (provider, instance_type, region, currency, valid_from)
);
COMMENT ON TABLE instance_prices IS
	'what an instance type costs per hour in a region and currency, from valid_from on (fleetbench prices import)';
COMMENT ON COLUMN instance_prices.provider IS
	'the provider, as the agents label it (runs.provider)';
COMMENT ON COLUMN instance_prices.instance_type IS
	'the instance type, as the agents label it (runs.instance_type)';
COMMENT ON COLUMN instance_prices.region IS
	'the region, as the agents label it (runs.region; ''unknown'' matches runs without a region label)';
COMMENT ON COLUMN instance_prices.currency IS
	'ISO 4217 code: three upper-case letters (USD, EUR)';
COMMENT ON COLUMN instance_prices.price_per_hour IS
	'the price of one instance for one hour, in currency, above 0, the digits as imported';
COMMENT ON COLUMN instance_prices.valid_from IS
	'the first day the price applies; it applies until a row of a later valid_from that has begun';
COMMENT ON COLUMN instance_prices.imported_at IS
	'when the row was imported or its price last changed';
