-- Key prefixes showed the first 10 characters of a key; see the SQLite 060 for why they are cut.
UPDATE api_keys SET prefix = CASE WHEN substr(prefix, 1, 3) = 'hk_' THEN substr(prefix, 1, 7) ELSE '…' END;
