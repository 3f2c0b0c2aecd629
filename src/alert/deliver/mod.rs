//! Delivery: notices rendered into messages, queued in the outbox, sent by
//! mail (lettre: smtp, sendmail, file) or webhook, retried until accepted.
