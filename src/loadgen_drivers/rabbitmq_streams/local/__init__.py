"""RabbitMQ Streams on 127.0.0.1: Debian's rabbitmq-server with its stream plugin."""
