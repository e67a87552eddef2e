"""RabbitMQ on 127.0.0.1: Debian's rabbitmq-server in a folder of its own."""
