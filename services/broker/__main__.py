from services.broker.main import main

main()
