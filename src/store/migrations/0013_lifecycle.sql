-- Why an alert was resolved: 'cleared' (the rule no longer finds it) or
-- 'rule_disabled' (the rule was switched off in the configuration: the alert
-- is closed silently, with no resolved notice). NULL while the alert is open.
ALTER TABLE alert ADD COLUMN resolution TEXT CHECK (resolution IN ('cleared', 'rule_disabled'));
UPDATE alert SET resolution = 'cleared' WHERE state = 'resolved';

-- Older versions set queued_at when an alert fired with no transport
-- configured, although nothing was queued: such an alert was never mailed,
-- yet got a resolved notice later. queued_at now means "the firing notice is
-- in the outbox"; an open alert without one is mailed once a transport exists.
UPDATE alert SET queued_at = NULL
 WHERE state <> 'resolved' AND queued_at IS NOT NULL
   AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.alert_id = alert.id AND o.notice = 'firing');
